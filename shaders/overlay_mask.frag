#version 430
// Overlay mask: one byte per pixel of the frame (rows top-down), blended over it.
// Coverage mode: the byte scales the colour's alpha. Palette mode: byte k > 0 picks
// palette[k - 1], 0 leaves the pixel alone.
layout(std430, binding = 0) readonly buffer Mask { uint words[]; };
out vec4 out_colour;

uniform ivec2 size;
uniform int palette_size;   // 0: coverage mode
uniform float scale;        // 1 for 0..255 bytes, 255 for 0/1 (bool) bytes
uniform vec4 colour;
uniform vec4 palette[255];

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    int k = (size.y - 1 - p.y) * size.x + p.x;
    uint value = (words[k >> 2] >> (8u * uint(k & 3))) & 255u;
    if (palette_size == 0) {
        float a = min(float(value) * scale, 255.0) / 255.0 * colour.a;
        if (a <= 0.0) discard;
        out_colour = vec4(colour.rgb, a);
    } else {
        if (value == 0u || int(value) > palette_size) discard;
        out_colour = palette[int(value) - 1];
    }
}
