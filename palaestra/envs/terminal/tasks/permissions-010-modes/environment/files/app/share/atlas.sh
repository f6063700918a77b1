/app/share/atlas.sh
