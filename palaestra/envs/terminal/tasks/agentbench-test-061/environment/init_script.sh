
#!/bin/bash

mkdir -p logs

for month in {1..12}; do
  for day in {1..31}; do
    touch "logs/2021-$(printf '%02d' $month)-$(printf '%02d' $day).log"
  done
done