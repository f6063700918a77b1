
mkdir -p log_folder
touch log_folder/log_2022-05-01.txt
touch log_folder/log_2022-06-10.txt
touch log_folder/log_2022-07-05.txt
touch log_folder/log_2022-07-15.txt