
#!/bin/bash

mkdir student_data
echo "1001 84 90 91" > student_data/student1.txt
echo "1002 76 89 98" > student_data/student2.txt
echo "1003 88 74 80" > student_data/student3.txt
echo "1004 92 88 89" > student_data/student4.txt