echo 123>/home/agent/.tmp
echo 123>/home/agent/.tmp2
echo 123>/home/agent/1.tep
echo 123>/home/agent/.tep
echo 123>/home/agent/.u
echo 123>/home/agent/.k
