
mkdir logs
echo "INFO: Service started" > logs/log1.txt
echo "ERROR: Connection failed" >> logs/log1.txt
echo "ERROR: File not found" >> logs/log1.txt
echo "WARNING: High CPU usage" >> logs/log1.txt

echo "ERROR: Disk full" > logs/log2.txt
echo "INFO: Configuration updated" >> logs/log2.txt
echo "INFO: Service restarted" >> logs/log2.txt
echo "ERROR: Database connection lost" >> logs/log2.txt