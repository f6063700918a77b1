
#!/bin/bash
# No specific initialization is required for this problem as we are exploring an existing Ubuntu directory.