// Planted: a folder of plugin/ that is no room.
