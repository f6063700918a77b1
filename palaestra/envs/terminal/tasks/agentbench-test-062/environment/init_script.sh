
#!/bin/bash
mkdir test_directory
cd test_directory
number_of_dirs=$((RANDOM % 5 + 3))
for ((d = 1; d <= number_of_dirs; d++))
do
    mkdir "subdir_$d"
    cd "subdir_$d"
    number_of_files=$((RANDOM % 7 + 4))
    for ((f = 1; f <= number_of_files; f++))
    do
        touch "file_$f"
        echo "$(cat /dev/urandom | tr -cd '[:alnum:]' | head -c $((RANDOM % 20 + 10)))" > "file_$f"
    done
    cd ..
done