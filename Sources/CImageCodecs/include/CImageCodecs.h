#ifndef CIMAGECODECS_H
#define CIMAGECODECS_H
#include <stddef.h>
#include <stdint.h>

/* Decodes a JPEG 2000 image (JP2 file or raw J2K codestream) held in memory into 8-bit RGB.
   Greyscale and YCC/sYCC images are converted; alpha is dropped.
   Returns 0 on success and sets *rgb (free with CImageCodecs_free), *width, *height.
   On failure returns a negative code and writes a message into error (size bytes). */
int CImageCodecs_decode_jpeg2000(const uint8_t *data, size_t length, int max_pixels,
                                 uint8_t **rgb, int *width, int *height, char *error, size_t size);

/* Encodes 8-bit RGB as baseline JPEG at quality 1–100 with libjpeg-turbo.
   Returns 0 on success and sets *jpeg (free with CImageCodecs_free) and *jpeg_length. */
int CImageCodecs_encode_jpeg(const uint8_t *rgb, int width, int height, int quality,
                             uint8_t **jpeg, unsigned long *jpeg_length, char *error, size_t size);

/* Decodes a JPEG into 8-bit RGB with libjpeg-turbo (for checks and re-encoding). */
int CImageCodecs_decode_jpeg(const uint8_t *data, size_t length, uint8_t **rgb, int *width, int *height,
                             char *error, size_t size);

/* Encodes 8-bit RGB as PNG with libpng (zlib compression).
   Returns 0 on success and sets *png (free with CImageCodecs_free) and *png_length. */
int CImageCodecs_encode_png(const uint8_t *rgb, int width, int height, uint8_t **png, size_t *png_length,
                            char *error, size_t size);

void CImageCodecs_free(void *pointer);
#endif
