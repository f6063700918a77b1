
#!/bin/bash
mkdir -p log_files
echo "5" > log_files/log_server_2_$(date --date="5 days ago" +%Y-%m-%d).txt
echo "5" > log_files/log_server_4_$(date --date="5 days ago" +%Y-%m-%d).txt
echo "3" > log_files/log_server_3_$(date --date="2 days ago" +%Y-%m-%d).txt
echo "7" > log_files/log_server_5_$(date --date="1 days ago" +%Y-%m-%d).txt
echo "1" > log_files/log_server_1_$(date --date="9 days ago" +%Y-%m-%d).txt