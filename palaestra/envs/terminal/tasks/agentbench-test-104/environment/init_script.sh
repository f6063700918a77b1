
#!/bin/bash
# This script doesn't need any initialization because the /var/log directory exists in all Linux distributions as a default.