/app/share/cirrus.sh
