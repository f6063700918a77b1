
#!/bin/bash
# Initialization script to create logfile.txt with random strings

# Generating a random characters string of length 1000
random_string=$(cat /dev/urandom | tr -dc "[:alnum:]" | head -c 1000)

# Creating and initializing logfile.txt with random string content
echo $random_string > logfile.txt