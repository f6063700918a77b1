
# Randomly generate a log file system_logs.txt
cat /dev/urandom | tr -dc 'a-zA-Z0-9!@#$%^&*()_+-=[]{}|;:",.<>/?\` ~\n' | head -c 5000 > system_logs.txt
# Add some empty lines to system_logs.txt
for i in {1..20}; do
  if (( $i % 3 == 0 )); then
    sed -i "${i}s/$/\n/" system_logs.txt
  fi
done