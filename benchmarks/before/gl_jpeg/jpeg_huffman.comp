#version 430
// JPEG pass 2 of 4: one invocation per restart segment (RESTART MCUs) Huffman-codes its blocks
// into its own slot of SEG_WORDS words, stuffing a 0x00 after every 0xFF, pads the last byte
// with 1-bits and ends with the RSTn marker (all but the last segment). Segments are
// independent because a restart resets the DC predictions: that is what makes them parallel.
// Defines: SUB (1: 4:4:4, 2: 4:2:0), BLOCKS (blocks per MCU), RESTART, SEG_WORDS.
layout(local_size_x = 64) in;

uniform uint segments;
uniform uint mcus;

layout(std430, binding = 0) readonly buffer Coefficients { int coef[]; };
layout(std430, binding = 2) readonly buffer Codes { uint codes[1024]; };  // DC luma, AC luma, DC chroma, AC chroma
layout(std430, binding = 3) writeonly buffer Segments { uint seg_data[]; };
layout(std430, binding = 4) writeonly buffer Lengths { uint seg_len[]; };

uint acc = 0u;   // bits not yet in a byte (fewer than 8 between calls)
int nbits = 0;
uint word = 0u;  // bytes not yet in a word
uint pos = 0u;   // bytes written to this segment
uint base = 0u;

void emit(uint b) {
    word |= b << (8u * (pos & 3u));
    pos++;
    if ((pos & 3u) == 0u) {
        seg_data[base + (pos >> 2) - 1u] = word;
        word = 0u;
    }
}

void put(uint bits, int n) {
    acc = (acc << n) | bits;
    nbits += n;
    while (nbits >= 8) {
        nbits -= 8;
        uint b = (acc >> nbits) & 0xFFu;
        emit(b);
        if (b == 0xFFu) emit(0u);
    }
    acc &= (1u << nbits) - 1u;
}

void put_code(int table, int symbol) {
    uint e = codes[table * 256 + symbol];
    put(e & 0xFFFFu, int(e >> 16));
}

int category(int v) { return v == 0 ? 0 : findMSB(abs(v)) + 1; }

// A value of category n as JPEG codes it: n low bits, ones' complement for negatives.
uint magnitude(int v, int n) { return uint(v < 0 ? v - 1 : v) & ((1u << n) - 1u); }

void main() {
    uint s = gl_GlobalInvocationID.x;
    if (s >= segments) return;
    base = s * uint(SEG_WORDS);
    int pred[3] = int[3](0, 0, 0);
    uint first = s * uint(RESTART);
    uint last = min(first + uint(RESTART), mcus);
    for (uint m = first; m < last; m++) {
        for (int z = 0; z < BLOCKS; z++) {
            int comp = z < SUB * SUB ? 0 : z - SUB * SUB + 1;
            int dc_table = comp == 0 ? 0 : 2;
            int at = int(m) * BLOCKS * 64 + z * 64;
            int dc = coef[at];
            int diff = dc - pred[comp];
            pred[comp] = dc;
            int n = category(diff);
            put_code(dc_table, n);
            if (n > 0) put(magnitude(diff, n), n);
            int run = 0;
            for (int k = 1; k < 64; k++) {
                int v = coef[at + k];
                if (v == 0) {
                    run++;
                    continue;
                }
                while (run > 15) {
                    put_code(dc_table + 1, 0xF0);  // ZRL: sixteen zeros
                    run -= 16;
                }
                n = category(v);
                put_code(dc_table + 1, (run << 4) | n);
                put(magnitude(v, n), n);
                run = 0;
            }
            if (run > 0) put_code(dc_table + 1, 0x00);  // EOB
        }
    }
    if (nbits > 0) put((1u << (8 - nbits)) - 1u, 8 - nbits);
    if (s + 1u < segments) {  // markers are not stuffed
        emit(0xFFu);
        emit(0xD0u + (s & 7u));
    }
    if ((pos & 3u) != 0u) seg_data[base + (pos >> 2)] = word;
    seg_len[s] = pos;
}
