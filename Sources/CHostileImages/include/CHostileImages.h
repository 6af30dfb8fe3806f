#ifndef C_HOSTILE_IMAGES_H
#define C_HOSTILE_IMAGES_H
#include <stdint.h>

/* A hostile card's face (the emulator's --hostile scan-bomb-face) and the tests': a valid progressive JPEG (grey gradient, 3 components) of width × height whose scan
   script sends every AC coefficient of every component alone, then refines each one bit at a time
   `refinements` times — 1 + 63 × 3 × (1 + refinements) scans, each in a correct progression
   (libjpeg accepts it without a warning). With 10 refinements: 2,080 scans, what a decoder with
   no scan limit spends a second or more on per megapixel. A negative `refinements` makes a plain
   baseline JPEG of the same picture instead. Returns 0 and a malloc'd buffer. */
int CHostileImages_many_scan_jpeg(int width, int height, int refinements, uint8_t **jpeg, unsigned long *length);

#endif
