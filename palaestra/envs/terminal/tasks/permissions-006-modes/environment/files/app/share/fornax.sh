/app/share/fornax.sh
