
#!/bin/bash
mkdir -p /home/testdir{1..3}
touch /home/testdir1/file{1..3}.log
touch /home/testdir2/file{4..6}.log
touch /home/testdir3/file{7..9}.log

truncate -s 300KB /home/testdir1/file1.log
truncate -s 600KB /home/testdir1/file2.log
truncate -s 550KB /home/testdir1/file3.log
truncate -s 400KB /home/testdir2/file4.log
truncate -s 200KB /home/testdir2/file5.log
truncate -s 700KB /home/testdir2/file6.log
truncate -s 800KB /home/testdir3/file7.log
truncate -s 500KB /home/testdir3/file8.log
truncate -s 250KB /home/testdir3/file9.log