
#!/bin/bash
HOME_DIR=~

# Remove existing directory if it exists
rm -rf "${HOME_DIR}/StudentFiles"

# Create main directory in the home directory
mkdir "${HOME_DIR}/StudentFiles"