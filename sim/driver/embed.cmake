# cmake -DIN=file -DOUT=file.inc -P embed.cmake: writes IN's bytes as a C char array initialiser (NUL-terminated),
# so the binary carries the file and never reads the source tree at run time.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "// Generated from ${IN} by embed.cmake; do not edit.\n{${body}0x00}\n")
