#version 430
// A packed pass (dataset_pack.comp with ROWS) as the scanlines of its PNG: per row, top-down, the
// filter byte 2 (Up), then each byte of the row minus the byte above it, modulo 256 (the first row
// minus 0). SWAP 1 (a uniform): the pixels are uint16, packed little-endian, and PNG stores them
// big-endian, so scanline byte j of a row is packed byte j ^ 1. The same bytes as the host's
// glrec.encoders.png.writer.png_rows of the pass's array, so a file's bytes do not depend on where
// its rows were filtered. Reads section at_in of Scratch (scratch_stride words per layer), writes
// section at_out of Out (stride words per layer); one invocation makes one word (4 bytes), work
// group row y is layer y.
layout(local_size_x = 64) in;

layout(std430, binding = 0) writeonly buffer Out { uint words[]; };
layout(std430, binding = 6) readonly buffer Scratch { uint scratch[]; };

uniform int row_bytes;       // bytes of one row's pixels (width x bytes per pixel)
uniform int rows;            // the image's height
uniform int swap;            // 1: 16-bit samples, swapped to big-endian
uniform int at_in;           // word offsets of the pixels in Scratch and of the scanlines in Out
uniform int at_out;
uniform int stride;          // words per layer in Out
uniform int scratch_stride;  // words per layer in Scratch

uint packed_byte(int base, int i) { return (scratch[base + (i >> 2)] >> (8 * (i & 3))) & 0xFFu; }

void main() {
    int g = int(gl_GlobalInvocationID.x);
    int layer = int(gl_GlobalInvocationID.y);
    int line = row_bytes + 1;
    int total = rows * line;
    int q0 = 4 * g;
    if (q0 >= total) return;
    int base = at_in + layer * scratch_stride;
    uint word = 0u;
    for (int i = 0; i < 4; i++) {
        int q = q0 + i;
        if (q >= total) break;
        int r = q / line;
        int k = q - r * line;
        uint v = 2u;  // the row's filter byte: Up
        if (k > 0) {
            int at = r * row_bytes + ((k - 1) ^ swap);
            uint above = r > 0 ? packed_byte(base, at - row_bytes) : 0u;
            v = (packed_byte(base, at) - above) & 0xFFu;
        }
        word |= v << (8 * i);
    }
    words[at_out + layer * stride + g] = word;
}
