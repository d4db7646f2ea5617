#version 330 core
// Source stage: a decoded picture's planes (rows top-down, as decoders write them)
// become one RGBA texture with rows bottom-up, as GL and glrec's render targets store them.
// Which plane component feeds which channel (glrec/sources/formats.py) is written into the
// shader per format by glrec/sources/rgb.py (fetch_code): one fetch per plane texture and
// plain swizzles (a uniform selection matrix per texture cost as much again on software GL).
in vec2 uv;
out vec4 colour;

uniform sampler2D plane0;
uniform sampler2D plane1;
uniform sampler2D plane2;
uniform sampler2D plane3;
uniform vec4 fixed_value;  // channels no texture feeds (grey chroma, opaque alpha)
uniform float value_scale; // normalised texture value -> code value / (2^bits - 1)
// Nearest sampling: each fetch is one stored sample. Recovering its integer code and dividing by
// 2^bits - 1 gives the same float whichever texture layout held it (R16 with 10 bits low, P016
// with 10 bits high, R8 or the RG8 of NV12), so equal samples convert to equal RGB on every path.
uniform int exact_codes;
uniform float unorm_max;   // 255 or 65535: the texture's normalisation
uniform float code_div;    // 2^(16 - bits) where the bits sit high in a 16-bit word (P010, P016), else 1
uniform float code_top;    // 2^bits - 1
uniform int is_rgb;
uniform mat3 yuv_matrix;   // (Y, Cb, Cr) -> (R, G, B)
uniform vec3 yuv_offset;
uniform vec3 yuv_scale;
uniform mat2 orient;       // display rotation of the picture (identity for most streams)
uniform vec2 plane_scale[4]; // picture coordinates -> texture i's, where chroma of an odd size overhangs
uniform int top_down;      // 1: write the top row first (a Shadertoy channel with vflip off)

void main() {
    // Picture coordinates: y down from the top row, as the planes are stored.
    vec2 p = orient * (vec2(uv.x, top_down == 1 ? uv.y : 1.0 - uv.y) - 0.5) + 0.5;
    vec4 raw;
//__FETCH__
    if (exact_codes == 1) {
        raw = floor(floor(raw * unorm_max + 0.5) / code_div) / code_top + fixed_value;
    } else {
        raw = raw * value_scale + fixed_value;  // filtered samples lie between codes: scale only
    }
    vec3 rgb = is_rgb == 1 ? raw.rgb : yuv_matrix * ((raw.xyz - yuv_offset) / yuv_scale);
    colour = vec4(clamp(rgb, 0.0, 1.0), clamp(raw.a, 0.0, 1.0));
}
