from rewardkit import criteria

criteria.file_exists("notes.txt")
