
#!/bin/bash

mkdir employees
echo -e "urgent:30\nnormal:10\nurgent:20\nnormal:15" > employees/101.txt
echo -e "normal:20\nurgent:40\nnormal:10\nurgent:15" > employees/102.txt
echo -e "normal:25\nnormal:15\nurgent:35\nnormal:10" > employees/103.txt
echo -e "urgent:10\nurgent:20\nnormal:30\nnormal:15" > employees/104.txt
echo -e "normal:35\nnormal:20\nurgent:25\nurgent:15" > employees/105.txt
echo -e "normal:10\nnormal:15\nurgent:20\nnormal:30" > employees/106.txt