/app/share/orion.sh
