// Planted: a source directly in plugin/, in no room.
int loose = 0;
