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

#include <time.h>

/* The process's CPU time in microseconds (CLOCK_PROCESS_CPUTIME_ID). */
static uint64_t cpu_microseconds(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0) return 0;
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

/* Whether the decode has spent its CPU budget (limits->cpu_microseconds of this process's CPU
   time since `start`; 0: no budget). */
static int over_budget(const CImageCodecsLimits *limits, uint64_t start) {
    return limits->cpu_microseconds > 0 && cpu_microseconds() - start > limits->cpu_microseconds;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Where the codestream starts: at 0 for a raw J2K codestream; in a JP2 file, at the contents of
   its Contiguous Codestream box (jp2c), found by walking the top-level boxes — never the first
   FF4F FF51 anywhere, which any other box (an `xml ` box, say) can carry as a decoy. */
static int codestream_offset(const uint8_t *data, size_t length, size_t *offset) {
    static const uint8_t jp2_signature[12] = {0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A};
    if (length >= 4 && data[0] == 0xFF && data[1] == 0x4F && data[2] == 0xFF && data[3] == 0x51) { *offset = 0; return 0; }
    if (length < 12 || memcmp(data, jp2_signature, 12) != 0) return -1;
    size_t at = 0;
    for (int boxes = 0; boxes < 1024 && at + 8 <= length; boxes++) {
        uint64_t box = be32(data + at);
        size_t header = 8;
        if (box == 1) {                                   /* XLBox: a 64-bit length follows the type */
            if (at + 16 > length) return -1;
            box = (uint64_t)be32(data + at + 8) << 32 | be32(data + at + 12);
            header = 16;
        } else if (box == 0) {                            /* the last box: to the end of the file */
            box = length - at;
        }
        if (box < header || box > length - at) return -1;
        if (memcmp(data + at + 4, "jp2c", 4) == 0) { *offset = at + header; return 0; }
        at += (size_t)box;
    }
    return -1;
}

/* Reads the SIZ marker of the codestream in data (a raw J2K codestream, or the one a JP2 file
   carries in its jp2c box) without OpenJPEG, so that what OpenJPEG would allocate for the header
   alone — one structure per tile — is known before it runs. */
int CImageCodecs_jpeg2000_size(const uint8_t *data, size_t length, CImageCodecsJPEG2000Size *out) {
    memset(out, 0, sizeof *out);
    size_t i = 0;
    if (codestream_offset(data, length, &i) != 0) return -1;
    /* SOC SIZ Lsiz(2) Rsiz(2) Xsiz Ysiz XOsiz YOsiz XTsiz YTsiz XTOsiz YTOsiz (4 each) Csiz(2) */
    if (i + 4 + 2 + 2 + 32 + 2 > length) return -1;
    if (!(data[i] == 0xFF && data[i + 1] == 0x4F && data[i + 2] == 0xFF && data[i + 3] == 0x51)) return -1;
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
    const CImageCodecsLimits *limits;
    uint64_t started;
} bounded_progress;

static void bounded_progress_monitor(j_common_ptr cinfo) {
    j_decompress_ptr decompress = (j_decompress_ptr)cinfo;
    bounded_progress *progress = (bounded_progress *)cinfo->progress;
    if (over_budget(progress->limits, progress->started)) {
        bounded_error *error = (bounded_error *)cinfo->err;
        snprintf(error->message, sizeof error->message, "decoding took more than its %llu ms of CPU time (refused: too costly)",
                 (unsigned long long)(progress->limits->cpu_microseconds / 1000));
        longjmp(error->jump, 2);
    }
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
    progress.limits = limits;
    progress.started = cpu_microseconds();
    cinfo.progress = &progress.manager;
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK || cinfo.image_width == 0 || cinfo.image_height == 0) {
        set_error(error, size, "damaged JPEG header"); jpeg_destroy_decompress(&cinfo); return -2;
    }
    uint64_t sw = cinfo.image_width, sh = cinfo.image_height;
    unsigned components = (unsigned)cinfo.num_components;
    /* A large photo is decoded at the scale its reader needs (libjpeg's DCT scaling: 1/2, 1/4,
       1/8), never whole: a 62-megapixel JPEG cost 4-6 s at full size. */
    unsigned denominator = 1;
    if (limits->scale_to_pixels > 0) {
        while (denominator < 8 && ((sw + denominator - 1) / denominator) * ((sh + denominator - 1) / denominator) > limits->scale_to_pixels) {
            denominator *= 2;
        }
    }
    cinfo.scale_num = 1;
    cinfo.scale_denom = denominator;
    jpeg_calc_output_dimensions(&cinfo);
    uint64_t w = cinfo.output_width, h = cinfo.output_height;
    /* The output, a row group of each component, and (progressive) the whole coefficient image at full size. */
    uint64_t working = w * h * 3 + (cinfo.progressive_mode ? sw * sh * components * 2 : sw * 16 * components * 2);
    if (w * h > limits->max_pixels || sw * sh > limits->max_pixels * 64 || working > limits->max_bytes || components > 4 || w == 0 || h == 0) {
        set_error(error, size, "JPEG image too large to decode within the limits"); jpeg_destroy_decompress(&cinfo); return -5;
    }
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    /* CMYK and YCCK (what many document scanners write): libjpeg gives the inks (YCCK converted),
       turned into RGB here as browsers do: Adobe's files (an APP14 "Adobe" marker) store them inverted. */
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    w = cinfo.output_width; h = cinfo.output_height;
    int inverted = cmyk && jpeg_has_adobe_marker(data, length);
    out = malloc((size_t)(w * h * 3));
    row = malloc((size_t)w * (size_t)cinfo.output_components);
    if (!out || !row) {
        free(out); free(row); jpeg_destroy_decompress(&cinfo); set_error(error, size, "out of memory"); return -3;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[1] = { row };
        size_t y = cinfo.output_scanline;
        if ((y & 15) == 0 && over_budget(limits, progress.started)) {
            snprintf(jerr.message, sizeof jerr.message, "decoding took more than its %llu ms of CPU time (refused: too costly)",
                     (unsigned long long)(limits->cpu_microseconds / 1000));
            longjmp(jerr.jump, 2);
        }
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

/* ---- PNG decoding through libpng's full API: text chunks never inflated, a CPU budget ---- */

typedef struct {
    const uint8_t *data;
    size_t length;
    size_t offset;
    jmp_buf jump;
    char message[160];
    const CImageCodecsLimits *limits;
    uint64_t started;
    int too_costly;
} png_source;

static void png_read_memory(png_structp png, png_bytep out, png_size_t count) {
    png_source *source = (png_source *)png_get_io_ptr(png);
    if (count > source->length - source->offset) png_error(png, "the PNG ends early");
    memcpy(out, source->data + source->offset, count);
    source->offset += count;
}

static void png_failed(png_structp png, png_const_charp message) {
    png_source *source = (png_source *)png_get_error_ptr(png);
    snprintf(source->message, sizeof source->message, "%s", message ? message : "damaged PNG");
    longjmp(source->jump, 1);
}

static void png_warned(png_structp png, png_const_charp message) { (void)png; (void)message; }

/* Called after each row: the decode's CPU budget. */
static void png_row_done(png_structp png, png_uint_32 row, int pass) {
    (void)pass;
    png_source *source = (png_source *)png_get_io_ptr(png);
    if ((row & 15) == 0 && over_budget(source->limits, source->started)) {
        source->too_costly = 1;
        png_error(png, "decoding took more than its CPU time (refused: too costly)");
    }
}

int CImageCodecs_decode_png(const uint8_t *data, size_t length, const CImageCodecsLimits *limits,
                            uint8_t **rgb, int *width, int *height, char *error, size_t size) {
    *rgb = NULL;
    png_source source;
    memset(&source, 0, sizeof source);
    source.data = data; source.length = length; source.limits = limits; source.started = cpu_microseconds();
    if (length < 8 || png_sig_cmp(data, 0, 8) != 0) { set_error(error, size, "not a PNG"); return -2; }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_failed, png_warned);
    if (!png) { set_error(error, size, "out of memory"); return -3; }
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_read_struct(&png, NULL, NULL); set_error(error, size, "out of memory"); return -3; }
    uint8_t *volatile out = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(source.jump)) {
        set_error(error, size, source.message[0] ? source.message : "damaged PNG");
        png_destroy_read_struct(&png, &info, NULL);
        free(out); free(rows);
        return source.too_costly ? -7 : -4;
    }
    png_set_read_fn(png, &source, png_read_memory);
    /* Text and ICC chunks are never read into memory, let alone inflated (a PNG of 990 zTXt
       chunks ran 8 s), nor kept; no chunk may ask for more than 8 MiB. */
    static const png_byte ignored[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ignored, 5);
    png_set_chunk_cache_max(png, 64);
    png_set_chunk_malloc_max(png, 8 << 20);
    png_set_user_limits(png, 65535, 65535);
    png_set_read_status_fn(png, png_row_done);
    png_read_info(png, info);
    png_uint_32 w32 = 0, h32 = 0;
    int depth = 0, colour = 0, interlace = 0;
    png_get_IHDR(png, info, &w32, &h32, &depth, &colour, &interlace, NULL, NULL);
    uint64_t w = w32, h = h32;
    /* The output and, interlaced, libpng's passes over it. */
    if (w == 0 || h == 0 || w * h > limits->max_pixels || w * h * 3 + w * 8 > limits->max_bytes) {
        set_error(error, size, "PNG image too large to decode within the limits");
        png_destroy_read_struct(&png, &info, NULL);
        return -5;
    }
    if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (colour == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16) png_set_strip_16(png);
    if (colour == PNG_COLOR_TYPE_GRAY || colour == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    /* Transparency composed over white, as the page's placeholder background is. */
    png_color_16 white = {0, 255, 255, 255, 255};
    png_set_background(png, &white, PNG_BACKGROUND_GAMMA_SCREEN, 0, 1.0);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != w * 3) {
        set_error(error, size, "PNG of an unsupported layout");
        png_destroy_read_struct(&png, &info, NULL);
        return -4;
    }
    out = malloc((size_t)(w * h * 3));
    rows = malloc((size_t)h * sizeof(png_bytep));
    if (!out || !rows) {
        free(out); free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        set_error(error, size, "out of memory"); return -3;
    }
    for (size_t y = 0; y < h; y++) rows[y] = out + y * w * 3;
    png_read_image(png, rows);
    /* What follows the image data (text chunks, more IDAT garbage) is not read at all. */
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    *rgb = out; *width = (int)w; *height = (int)h;
    return 0;
}

void CImageCodecs_free(void *pointer) { free(pointer); }
