#!/bin/bash
set -e
echo hello > /app/notes.txt
