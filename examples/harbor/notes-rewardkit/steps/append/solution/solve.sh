#!/bin/bash
set -e
echo world >> /app/notes.txt
