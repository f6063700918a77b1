
cat << EOF > server.log
9:15 Login Success
9:30 Login Success
13:00 Login Success
23:20 Login Success
23:40 Login Success
1:59 Login Success
EOF