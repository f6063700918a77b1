echo 123>/home/agent/.tmp
echo 123>/home/agent/.tmp2
echo 123>/home/agent/1.helloworld
echo 123>/home/agent/.helloworld
echo 123>/home/agent/.u
echo 123>/home/agent/2.helloworld
