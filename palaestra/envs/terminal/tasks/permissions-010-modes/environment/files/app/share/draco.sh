/app/share/draco.sh
