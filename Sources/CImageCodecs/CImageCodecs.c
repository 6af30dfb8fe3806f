#include "CImageCodecs.h"
#include <stdio.h>
#include <openjpeg.h>
#include <turbojpeg.h>
#include <jpeglib.h>
#include <setjmp.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- OpenJPEG reading from memory ---- */

typedef struct {
    const uint8_t *data;
    size_t length;
    size_t offset;
} memory_stream;

static OPJ_SIZE_T ms_read(void *buffer, OPJ_SIZE_T count, void *user) {
    memory_stream *ms = user;
    if (ms->offset >= ms->length) return (OPJ_SIZE_T)-1;
    size_t n = ms->length - ms->offset;
    if (n > count) n = count;
    memcpy(buffer, ms->data + ms->offset, n);
    ms->offset += n;
    return n;
}

static OPJ_OFF_T ms_skip(OPJ_OFF_T count, void *user) {
    memory_stream *ms = user;
    if (count < 0) {
        if ((size_t)(-count) > ms->offset) { OPJ_OFF_T moved = -(OPJ_OFF_T)ms->offset; ms->offset = 0; return moved; }
    } else if (ms->offset + (size_t)count > ms->length) {
        OPJ_OFF_T moved = (OPJ_OFF_T)(ms->length - ms->offset); ms->offset = ms->length; return moved;
    }
    ms->offset += count;
    return count;
}

static OPJ_BOOL ms_seek(OPJ_OFF_T position, void *user) {
    memory_stream *ms = user;
    if (position < 0 || (size_t)position > ms->length) return OPJ_FALSE;
    ms->offset = (size_t)position;
    return OPJ_TRUE;
}

static void quiet(const char *message, void *user) { (void)message; (void)user; }

static void set_error(char *error, size_t size, const char *message) {
    if (error && size) { strncpy(error, message, size - 1); error[size - 1] = 0; }
}

static uint8_t clamp8(double v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)(v + 0.5); }

/* Scales component c's sample to 8 bits (precision checked to 1..16 before). */
static int sample8(const opj_image_comp_t *c, size_t index) {
    int v = c->data[index];
    if (c->sgnd) v += 1 << (c->prec - 1);
    if (c->prec > 8) v >>= (c->prec - 8);
    else if (c->prec < 8) v <<= (8 - c->prec);
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Reads the SIZ marker of the codestream in data (a raw J2K codestream, or the one a JP2 file
   carries) without OpenJPEG, so that what OpenJPEG would allocate for the header alone — one
   structure per tile — is known before it runs. */
int CImageCodecs_jpeg2000_size(const uint8_t *data, size_t length, CImageCodecsJPEG2000Size *out) {
    memset(out, 0, sizeof *out);
    size_t i = 0;
    for (; i + 4 <= length; i++) {
        if (data[i] == 0xFF && data[i + 1] == 0x4F && data[i + 2] == 0xFF && data[i + 3] == 0x51) break;
    }
    /* SOC SIZ Lsiz(2) Rsiz(2) Xsiz Ysiz XOsiz YOsiz XTsiz YTsiz XTOsiz YTOsiz (4 each) Csiz(2) */
    if (i + 4 + 2 + 2 + 32 + 2 > length) return -1;
    const uint8_t *siz = data + i + 4;
    uint32_t x = be32(siz + 4), y = be32(siz + 8), xo = be32(siz + 12), yo = be32(siz + 16);
    uint32_t xt = be32(siz + 20), yt = be32(siz + 24), xto = be32(siz + 28), yto = be32(siz + 32);
    unsigned components = (unsigned)siz[36] << 8 | siz[37];
    if (x <= xo || y <= yo || xt == 0 || yt == 0 || xto > xo || yto > yo) return -2;
    out->width = (uint64_t)(x - xo);
    out->height = (uint64_t)(y - yo);
    out->tiles = (((uint64_t)x - xto + xt - 1) / xt) * (((uint64_t)y - yto + yt - 1) / yt);
    out->components = components;
    return 0;
}

int CImageCodecs_decode_jpeg2000(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                                 uint8_t **rgb, int *width, int *height, char *error, size_t size) {
    *rgb = NULL;
    if (length < 12) { set_error(error, size, "too short for JPEG 2000"); return -1; }
    OPJ_CODEC_FORMAT format;
    static const uint8_t jp2_signature[12] = {0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A};
    if (memcmp(data, jp2_signature, 12) == 0) format = OPJ_CODEC_JP2;
    else if (data[0] == 0xFF && data[1] == 0x4F && data[2] == 0xFF && data[3] == 0x51) format = OPJ_CODEC_J2K;
    else { set_error(error, size, "not a JP2 file or J2K codestream"); return -2; }

    CImageCodecsJPEG2000Size siz;
    if (CImageCodecs_jpeg2000_size(data, length, &siz) != 0) { set_error(error, size, "damaged JPEG 2000 size marker"); return -4; }
    if (siz.components < 1 || siz.components > 4) {
        set_error(error, size, "JPEG 2000 image with an unsupported number of components"); return -5;
    }
    if (siz.tiles > (uint64_t)limits->max_tiles) { set_error(error, size, "JPEG 2000 image with too many tiles"); return -5; }

    memory_stream ms = {data, length, 0};
    opj_stream_t *stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
    if (!stream) { set_error(error, size, "out of memory"); return -3; }
    opj_stream_set_user_data(stream, &ms, NULL);
    opj_stream_set_user_data_length(stream, length);
    opj_stream_set_read_function(stream, ms_read);
    opj_stream_set_skip_function(stream, ms_skip);
    opj_stream_set_seek_function(stream, ms_seek);

    opj_codec_t *codec = opj_create_decompress(format);
    opj_set_info_handler(codec, quiet, NULL);
    opj_set_warning_handler(codec, quiet, NULL);
    opj_set_error_handler(codec, quiet, NULL);
    opj_dparameters_t parameters;
    opj_set_default_decoder_parameters(&parameters);
    opj_image_t *image = NULL;
    opj_codestream_info_v2_t *info = NULL;
    int result = 0;
    if (!opj_setup_decoder(codec, &parameters) || !opj_read_header(stream, codec, &image)) {
        set_error(error, size, "damaged JPEG 2000 header"); result = -4; goto done;
    }
    if (image->numcomps < 1 || image->numcomps > 4 || image->x1 <= image->x0 || image->y1 <= image->y0) {
        set_error(error, size, "JPEG 2000 image of zero size or with an unsupported number of components"); result = -5; goto done;
    }
    for (unsigned c = 0; c < image->numcomps; c++) {
        const opj_image_comp_t *comp = &image->comps[c];
        if (comp->prec < 1 || comp->prec > 16 || comp->dx == 0 || comp->dy == 0) {
            set_error(error, size, "JPEG 2000 component with an unsupported precision or sampling"); result = -5; goto done;
        }
    }
    /* The smallest resolution reduction at which the decoded image and the decoder's working
       memory (a 32-bit sample per component and pixel, about twice over while decoding, plus the
       RGB output) fit the limits. Chip images are a few hundred pixels a side; one that declares
       thousands is decoded at a lower resolution level, or refused. */
    info = opj_get_cstr_info(codec);
    unsigned levels = info ? info->m_default_tile_info.tccp_info ? info->m_default_tile_info.tccp_info[0].numresolutions : 1 : 1;
    if (levels < 1) levels = 1;
    unsigned reduce = 0;
    for (;; reduce++) {
        if (reduce >= levels) {
            set_error(error, size, "JPEG 2000 image too large to decode within the limits"); result = -5; goto done;
        }
        uint64_t w = ((uint64_t)(image->x1 - image->x0) + (1ULL << reduce) - 1) >> reduce;
        uint64_t h = ((uint64_t)(image->y1 - image->y0) + (1ULL << reduce) - 1) >> reduce;
        uint64_t work = w * h * 3;
        for (unsigned c = 0; c < image->numcomps; c++) {
            work += (w / image->comps[c].dx + 1) * (h / image->comps[c].dy + 1) * 4 * 2;
        }
        if (w * h <= (uint64_t)limits->max_pixels && work <= (uint64_t)limits->max_bytes) break;
    }
    if (reduce > 0 && !opj_set_decoded_resolution_factor(codec, reduce)) {
        set_error(error, size, "JPEG 2000 image too large to decode within the limits"); result = -5; goto done;
    }
    if (!opj_decode(codec, stream, image) || !opj_end_decompress(codec, stream)) {
        set_error(error, size, "damaged JPEG 2000 image data"); result = -6; goto done;
    }
    int w = (int)image->comps[0].w, h = (int)image->comps[0].h;
    if (w <= 0 || h <= 0 || (uint64_t)w * (uint64_t)h > (uint64_t)limits->max_pixels) {
        set_error(error, size, "JPEG 2000 image of zero size or too large"); result = -7; goto done;
    }
    int colour = image->numcomps >= 3;
    for (unsigned i = 0; i < (colour ? 3u : 1u); i++) {
        if (!image->comps[i].data || image->comps[i].w == 0 || image->comps[i].h == 0) {
            set_error(error, size, "JPEG 2000 component without data"); result = -7; goto done;
        }
    }
    uint8_t *out = malloc((size_t)w * (size_t)h * 3);
    if (!out) { set_error(error, size, "out of memory"); result = -3; goto done; }
    int ycc = colour && (image->color_space == OPJ_CLRSPC_SYCC || image->color_space == OPJ_CLRSPC_EYCC);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            uint8_t *p = out + ((size_t)y * w + x) * 3;
            if (!colour) {
                int v = sample8(&image->comps[0], (size_t)y * w + x);
                p[0] = p[1] = p[2] = (uint8_t)v;
                continue;
            }
            int s[3];
            for (int c = 0; c < 3; c++) {
                const opj_image_comp_t *comp = &image->comps[c];
                int fx = (int)(comp->dx / image->comps[0].dx), fy = (int)(comp->dy / image->comps[0].dy);
                int cx = x / (fx > 0 ? fx : 1), cy = y / (fy > 0 ? fy : 1);
                if (cx >= (int)comp->w) cx = (int)comp->w - 1;
                if (cy >= (int)comp->h) cy = (int)comp->h - 1;
                s[c] = sample8(comp, (size_t)cy * comp->w + (size_t)cx);
            }
            if (ycc) {
                double Y = s[0], cb = s[1] - 128.0, cr = s[2] - 128.0;
                p[0] = clamp8(Y + 1.402 * cr);
                p[1] = clamp8(Y - 0.344136 * cb - 0.714136 * cr);
                p[2] = clamp8(Y + 1.772 * cb);
            } else {
                p[0] = (uint8_t)s[0]; p[1] = (uint8_t)s[1]; p[2] = (uint8_t)s[2];
            }
        }
    }
    *rgb = out; *width = w; *height = h;
done:
    if (info) opj_destroy_cstr_info(&info);
    if (image) opj_image_destroy(image);
    opj_destroy_codec(codec);
    opj_stream_destroy(stream);
    return result;
}

int CImageCodecs_encode_jpeg(const uint8_t *rgb, int width, int height, int quality,
                             uint8_t **jpeg, unsigned long *jpeg_length, char *error, size_t size) {
    *jpeg = NULL; *jpeg_length = 0;
    tjhandle handle = tjInitCompress();
    if (!handle) { set_error(error, size, "libjpeg-turbo could not start"); return -1; }
    unsigned char *buffer = NULL;
    unsigned long length = 0;
    int rc = tjCompress2(handle, rgb, width, 0, height, TJPF_RGB, &buffer, &length, TJSAMP_420, quality, TJFLAG_ACCURATEDCT);
    if (rc != 0) { set_error(error, size, tjGetErrorStr2(handle)); tjDestroy(handle); if (buffer) tjFree(buffer); return -2; }
    tjDestroy(handle);
    uint8_t *copy = malloc(length);
    if (!copy) { tjFree(buffer); set_error(error, size, "out of memory"); return -3; }
    memcpy(copy, buffer, length);
    tjFree(buffer);
    *jpeg = copy; *jpeg_length = length;
    return 0;
}

/* ---- JPEG decoding through libjpeg's own API: a scan limit and warnings as errors ---- */

/* The most scans a progressive JPEG may have: cameras and encoders write about ten; a file that
   repeats one refinement scan 2,000 times cost 73 s of CPU (libjpeg-turbo 2.1 sets no limit). */
#define CIMAGECODECS_MAX_JPEG_SCANS 64

typedef struct {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX + 64];
} bounded_error;

static void bounded_error_exit(j_common_ptr cinfo) {
    bounded_error *error = (bounded_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    longjmp(error->jump, 1);
}

/* A warning (corrupt data, a premature end) is an error here, as TurboJPEG made it. */
static void bounded_emit_message(j_common_ptr cinfo, int level) {
    if (level < 0) {
        bounded_error *error = (bounded_error *)cinfo->err;
        (*cinfo->err->format_message)(cinfo, error->message);
        longjmp(error->jump, 1);
    }
}

typedef struct {
    struct jpeg_progress_mgr manager;
    int max_scans;
} bounded_progress;

static void bounded_progress_monitor(j_common_ptr cinfo) {
    j_decompress_ptr decompress = (j_decompress_ptr)cinfo;
    bounded_progress *progress = (bounded_progress *)cinfo->progress;
    if (decompress->input_scan_number > progress->max_scans) {
        bounded_error *error = (bounded_error *)cinfo->err;
        snprintf(error->message, sizeof error->message, "a progressive JPEG of more than %d scans (refused: decoding it costs without bound)",
                 progress->max_scans);
        longjmp(error->jump, 2);
    }
}

/* Whether a JPEG carries Adobe's APP14 marker before its first scan (its CMYK is stored inverted). */
static int jpeg_has_adobe_marker(const uint8_t *data, size_t length) {
    size_t i = 2;
    while (i + 4 <= length) {
        if (data[i] != 0xFF) return 0;
        uint8_t marker = data[i + 1];
        if (marker == 0xFF) { i++; continue; }
        if (marker == 0xDA || marker == 0xD9) return 0;          /* start of scan, end of image */
        size_t segment = ((size_t)data[i + 2] << 8) | data[i + 3];
        if (segment < 2 || i + 2 + segment > length) return 0;
        if (marker == 0xEE && segment >= 7 && memcmp(data + i + 4, "Adobe", 5) == 0) return 1;
        i += 2 + segment;
    }
    return 0;
}

int CImageCodecs_decode_jpeg(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                             uint8_t **rgb, int *width, int *height, char *error, size_t size) {
    *rgb = NULL;
    struct jpeg_decompress_struct cinfo;
    bounded_error jerr;
    bounded_progress progress;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&jerr, 0, sizeof jerr);
    cinfo.err = jpeg_std_error(&jerr.manager);
    jerr.manager.error_exit = bounded_error_exit;
    jerr.manager.emit_message = bounded_emit_message;
    /* Volatile: set between setjmp and a longjmp back to it. */
    uint8_t *volatile out = NULL;
    uint8_t *volatile row = NULL;
    int outcome = setjmp(jerr.jump);
    if (outcome != 0) {
        set_error(error, size, jerr.message[0] ? jerr.message : "damaged JPEG");
        jpeg_destroy_decompress(&cinfo);
        free(out); free(row);
        return outcome == 2 ? -6 : -4;
    }
    jpeg_create_decompress(&cinfo);
    progress.manager.progress_monitor = bounded_progress_monitor;
    progress.max_scans = CIMAGECODECS_MAX_JPEG_SCANS;
    cinfo.progress = &progress.manager;
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK || cinfo.image_width == 0 || cinfo.image_height == 0) {
        set_error(error, size, "damaged JPEG header"); jpeg_destroy_decompress(&cinfo); return -2;
    }
    uint64_t w = cinfo.image_width, h = cinfo.image_height;
    unsigned components = (unsigned)cinfo.num_components;
    /* The output, a row group of each component, and (progressive) the whole coefficient image. */
    uint64_t working = w * h * 3 + (cinfo.progressive_mode ? w * h * components * 2 : w * 16 * components * 2);
    if (w * h > limits->max_pixels || working > limits->max_bytes || components > 4) {
        set_error(error, size, "JPEG image too large to decode within the limits"); jpeg_destroy_decompress(&cinfo); return -5;
    }
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    /* CMYK and YCCK (what many document scanners write): libjpeg gives the inks (YCCK converted),
       turned into RGB here as browsers do: Adobe's files (an APP14 "Adobe" marker) store them inverted. */
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    int inverted = cmyk && jpeg_has_adobe_marker(data, length);
    out = malloc((size_t)(w * h * 3));
    row = malloc((size_t)w * (size_t)cinfo.output_components);
    if (!out || !row) {
        free(out); free(row); jpeg_destroy_decompress(&cinfo); set_error(error, size, "out of memory"); return -3;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[1] = { row };
        size_t y = cinfo.output_scanline;
        if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) break;
        uint8_t *target = out + y * w * 3;
        if (cmyk) {
            for (size_t x = 0; x < w; x++) {
                unsigned c = row[4 * x], m = row[4 * x + 1], yy = row[4 * x + 2], k = row[4 * x + 3];
                if (!inverted) { c = 255 - c; m = 255 - m; yy = 255 - yy; k = 255 - k; }
                target[3 * x] = (uint8_t)((c * k + 127) / 255);
                target[3 * x + 1] = (uint8_t)((m * k + 127) / 255);
                target[3 * x + 2] = (uint8_t)((yy * k + 127) / 255);
            }
        } else {
            memcpy(target, row, (size_t)w * 3);
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(row);
    *rgb = out; *width = (int)w; *height = (int)h;
    return 0;
}

int CImageCodecs_encode_png(const uint8_t *rgb, int width, int height, uint8_t **png, size_t *png_length,
                            char *error, size_t size) {
    *png = NULL; *png_length = 0;
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)width;
    image.height = (png_uint_32)height;
    image.format = PNG_FORMAT_RGB;
    png_alloc_size_t length = 0;
    if (!png_image_write_to_memory(&image, NULL, &length, 0, rgb, 0, NULL)) {
        set_error(error, size, image.message); png_image_free(&image); return -1;
    }
    uint8_t *buffer = malloc(length);
    if (!buffer) { set_error(error, size, "out of memory"); png_image_free(&image); return -3; }
    if (!png_image_write_to_memory(&image, buffer, &length, 0, rgb, 0, NULL)) {
        set_error(error, size, image.message); free(buffer); png_image_free(&image); return -2;
    }
    png_image_free(&image);
    *png = buffer; *png_length = length;
    return 0;
}

int CImageCodecs_decode_png(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                            uint8_t **rgb, int *width, int *height, char *error, size_t size) {
    *rgb = NULL;
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) {
        set_error(error, size, image.message[0] ? image.message : "not a PNG");
        png_image_free(&image);
        return -2;
    }
    uint64_t w = image.width, h = image.height;
    /* libpng's simplified reader holds a row of the file's format besides the output. */
    if (w == 0 || h == 0 || w > 65535 || h > 65535 || w * h > limits->max_pixels || w * h * 3 + w * 8 > limits->max_bytes) {
        set_error(error, size, "PNG image too large to decode within the limits");
        png_image_free(&image);
        return -5;
    }
    image.format = PNG_FORMAT_RGB;
    uint8_t *out = malloc((size_t)(w * h * 3));
    if (!out) { set_error(error, size, "out of memory"); png_image_free(&image); return -3; }
    png_color white = {255, 255, 255};
    if (!png_image_finish_read(&image, &white, out, 0, NULL)) {
        set_error(error, size, image.message[0] ? image.message : "damaged PNG");
        free(out);
        png_image_free(&image);
        return -4;
    }
    png_image_free(&image);
    *rgb = out; *width = (int)w; *height = (int)h;
    return 0;
}

void CImageCodecs_free(void *pointer) { free(pointer); }
