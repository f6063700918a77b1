
#!/bin/bash
mkdir files
echo "5, 3 2" > files/file1.txt
echo "One million, Two thousand = 100^-1 -88" > files/file2.txt
echo "Bubble Sort is O(n^2) -17 -6" > files/file3.txt