from rewardkit import criteria

# The collect hook's listing (an artifact of the agent's machine) names the file.
criteria.file_contains("/logs/artifacts/listing.txt", "notes.txt")
