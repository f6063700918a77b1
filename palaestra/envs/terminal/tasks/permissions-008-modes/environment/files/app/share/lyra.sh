/app/share/lyra.sh
