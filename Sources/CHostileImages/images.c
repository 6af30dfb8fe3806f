#include "CHostileImages.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

int CHostileImages_many_scan_jpeg(int width, int height, int refinements, uint8_t **jpeg, unsigned long *length) {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    *jpeg = NULL;
    *length = 0;
    jpeg_mem_dest(&cinfo, jpeg, length);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 90, TRUE);
    if (refinements < 0) {
        /* A plain baseline JPEG of the same gradient: what an honest encoder writes. */
        jpeg_start_compress(&cinfo, TRUE);
        JSAMPLE *plain = malloc((size_t)width * 3);
        if (!plain) { jpeg_destroy_compress(&cinfo); return -1; }
        while (cinfo.next_scanline < cinfo.image_height) {
            for (int x = 0; x < width; x++) {
                plain[3 * x] = (JSAMPLE)(x * 255 / (width > 1 ? width - 1 : 1));
                plain[3 * x + 1] = (JSAMPLE)(cinfo.next_scanline * 255 / (JDIMENSION)(height > 1 ? height - 1 : 1));
                plain[3 * x + 2] = 128;
            }
            JSAMPROW rows[1] = { plain };
            jpeg_write_scanlines(&cinfo, rows, 1);
        }
        jpeg_finish_compress(&cinfo);
        jpeg_destroy_compress(&cinfo);
        free(plain);
        return 0;
    }
    int scans = 1 + 63 * 3 * (1 + refinements);
    jpeg_scan_info *script = calloc((size_t)scans, sizeof *script);
    if (!script) { jpeg_destroy_compress(&cinfo); return -1; }
    int n = 0;
    script[n].comps_in_scan = 3;
    for (int c = 0; c < 3; c++) script[n].component_index[c] = c;
    script[n].Ss = 0; script[n].Se = 0; script[n].Ah = 0; script[n].Al = 0;
    n++;
    for (int pass = 0; pass <= refinements; pass++) {
        int al = refinements - pass;
        for (int k = 1; k < 64; k++) {
            for (int c = 0; c < 3; c++) {
                script[n].comps_in_scan = 1;
                script[n].component_index[0] = c;
                script[n].Ss = k; script[n].Se = k;
                script[n].Ah = pass == 0 ? 0 : al + 1;
                script[n].Al = al;
                n++;
            }
        }
    }
    cinfo.scan_info = script;
    cinfo.num_scans = n;
    jpeg_start_compress(&cinfo, TRUE);
    JSAMPLE *row = malloc((size_t)width * 3);
    if (!row) { jpeg_destroy_compress(&cinfo); free(script); return -1; }
    while (cinfo.next_scanline < cinfo.image_height) {
        for (int x = 0; x < width; x++) {
            row[3 * x] = (JSAMPLE)(x * 255 / (width > 1 ? width - 1 : 1));
            row[3 * x + 1] = (JSAMPLE)(cinfo.next_scanline * 255 / (JDIMENSION)(height > 1 ? height - 1 : 1));
            row[3 * x + 2] = 128;
        }
        JSAMPROW rows[1] = { row };
        jpeg_write_scanlines(&cinfo, rows, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(row);
    free(script);
    return 0;
}
