
#!/bin/bash
mkdir -p logs
for i in {1..7}
do
    filename="log_$(date -d "-$i days" +"%Y-%m-%d").txt"
    FILE_PATH=logs/$filename
    touch $FILE_PATH
    for j in {1..30}
    do
        if [ $((RANDOM % 5)) -eq 0 ]
        then
            echo "Error: something went wrong" >> $FILE_PATH
        else
            echo "Debug: this is a debug message" >> $FILE_PATH
        fi
    done
done