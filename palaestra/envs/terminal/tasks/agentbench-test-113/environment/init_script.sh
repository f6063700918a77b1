
#!/bin/bash

# Create the "log_files" directory
mkdir -p log_files

# Fill each log file with 5-10 random log lines
for i in {1..10}; do
  log_file="log_files/log${i}.log"
  touch $log_file

  # Generate a random number of log lines (5-10)
  num_lines=$(( RANDOM % 6 + 5 ))

  j=0
  while [ $j -lt $num_lines ]; do
    # Generate random timestamp within a fixed range
    TIMESTAMP=$(date -d "$((RANDOM % 1 + 1970))-$((RANDOM % 12 + 1))-$((RANDOM % 28 + 1)) $((RANDOM % 24)):$((RANDOM % 60)):$((RANDOM % 60))"  '+%Y-%m-%d %H:%M:%S' 2>/dev/null)

    # Add log line
    echo "$TIMESTAMP Log message $j" >> $log_file
    j=$((j+1))
  done
done