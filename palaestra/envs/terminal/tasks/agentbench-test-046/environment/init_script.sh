
#!/bin/bash
mkdir -p experiment && cd experiment
echo -e "Ubuntu\nDebian\nArch\n" > distros.txt
echo -e "John,Doe,30\nJane,Doe,28\n" > sample.csv
echo -e "2022-01-01 14:34:21 [INFO] Server Started.\n" > server.log