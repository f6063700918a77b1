
#!/bin/bash

# Remove any previously created 'reports' directory just in case
rm -rf reports

# Create a 'reports' directory, enter it, and create text files with integer values
mkdir reports
cd reports

echo 15 > report1.txt
echo 10 > report2.txt
echo 5 > report3.txt
echo 20 > report4.txt
echo 50 > report5.txt
echo -10 > report6.txt

# Move back to the parent directory
cd ..