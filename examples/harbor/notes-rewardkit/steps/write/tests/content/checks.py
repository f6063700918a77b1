from rewardkit import criteria

criteria.file_matches("notes.txt", "hello")
