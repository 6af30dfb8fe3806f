#ifndef CIMAGECODECS_H
#define CIMAGECODECS_H
#include <stddef.h>
#include <stdint.h>

/* What a decode may cost: decoded pixels, estimated working memory, JPEG 2000 tiles. */
typedef struct {
    uint64_t max_pixels;
    uint64_t max_bytes;
    uint64_t max_tiles;
    /* JPEG: decode at 1/2, 1/4 or 1/8 (DCT scaling) until the output has at most this many pixels (0: full size). */
    uint64_t scale_to_pixels;
    /* The most CPU time (this process's, in microseconds) a JPEG or PNG decode may take (0: no budget). */
    uint64_t cpu_microseconds;
} CImageCodecsLimits;

/* A JPEG 2000 image's size as its SIZ marker declares it. */
typedef struct {
    uint64_t width;
    uint64_t height;
    uint64_t tiles;
    unsigned components;
} CImageCodecsJPEG2000Size;

/* Reads the SIZ marker (of a J2K codestream, or inside a JP2 file) without decoding anything.
   Returns 0 on success, a negative code when there is no readable SIZ marker. */
int CImageCodecs_jpeg2000_size(const uint8_t *data, size_t length, CImageCodecsJPEG2000Size *out);

/* Decodes a JPEG 2000 image (JP2 file or raw J2K codestream) held in memory into 8-bit RGB.
   Greyscale and YCC/sYCC images are converted; alpha is dropped. The header is read first: an
   image with more tiles or components than allowed is refused before OpenJPEG allocates for it,
   and one whose decoded size or working memory would pass the limits is decoded at the lowest
   resolution reduction that fits (or refused when none does).
   Returns 0 on success and sets *rgb (free with CImageCodecs_free), *width, *height.
   On failure returns a negative code and writes a message into error (size bytes). */
int CImageCodecs_decode_jpeg2000(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                                 uint8_t **rgb, int *width, int *height, char *error, size_t size);

/* Encodes 8-bit RGB as baseline JPEG at quality 1–100 with libjpeg-turbo.
   Returns 0 on success and sets *jpeg (free with CImageCodecs_free) and *jpeg_length. */
int CImageCodecs_encode_jpeg(const uint8_t *rgb, int width, int height, int quality,
                             uint8_t **jpeg, unsigned long *jpeg_length, char *error, size_t size);

/* Decodes a JPEG into 8-bit RGB with libjpeg-turbo (for checks and re-encoding); the header is
   read first and an image past the limits is refused before anything is allocated for it. */
int CImageCodecs_decode_jpeg(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                             uint8_t **rgb, int *width, int *height, char *error, size_t size);

/* Encodes 8-bit RGB as PNG with libpng (zlib compression).
   Returns 0 on success and sets *png (free with CImageCodecs_free) and *png_length. */
int CImageCodecs_encode_png(const uint8_t *rgb, int width, int height, uint8_t **png, size_t *png_length,
                            char *error, size_t size);

/* Decodes a PNG (any colour type and depth; palettes expanded, 16-bit reduced, alpha composed
   over white) into 8-bit RGB with libpng's full API. Text and ICC chunks are skipped unread (never
   inflated); the header is read first and an image past the limits is refused before anything is
   allocated for it; past its CPU budget the decode stops (-7, too costly). */
int CImageCodecs_decode_png(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                            uint8_t **rgb, int *width, int *height, char *error, size_t size);

void CImageCodecs_free(void *pointer);
#endif
