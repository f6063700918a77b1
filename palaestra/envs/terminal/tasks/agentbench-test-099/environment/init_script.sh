
# You may not need any init script in this case, as the files and directories
# in the "/etc" directory should be unchanged and consistent on all Ubuntu distributions.