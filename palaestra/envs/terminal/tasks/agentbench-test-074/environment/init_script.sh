
#!/bin/bash
echo "Initialization successful. Proceed with the task."