
#!/bin/bash
# This is a simple initialization script that does nothing, but you can add any necessary setup steps if needed.
echo "Initialization completed."