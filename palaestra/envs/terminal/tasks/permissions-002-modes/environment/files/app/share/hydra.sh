/app/share/hydra.sh
