
#!/bin/bash
mkdir -p sample_files
cd sample_files

cat <<EOF > server_log1.txt
[2022-01-01 12:56:47] 192.168.1.0 Something happened
[2022-01-02 14:34:12] 192.168.1.1 Another thing happened
[2022-01-03 10:20:38] 192.168.1.0 What just happened
EOF

cat <<EOF > server_log2.txt
[2022-01-04 15:14:59] 192.168.1.2 Nothing happened
[2022-01-05 08:23:07] 192.168.1.1 Something happened again
EOF