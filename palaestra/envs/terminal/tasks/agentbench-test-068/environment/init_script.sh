
#!/bin/bash
cd ~
mkdir -p .hidden-dir1 .hidden-dir2 visible-dir1
cd visible-dir1
mkdir -p .hidden-dir3 visible-dir2