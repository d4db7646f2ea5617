#version 330 core
// Test pattern: SMPTE-style colour bars, an orientation marker in the top-left
// corner, a marker that moves with time, and a binary time code (milliseconds)
// so a decoded frame says which instant it shows.
in vec2 uv;
out vec4 colour;
uniform float time;
uniform vec2 resolution;

const vec3 BARS[7] = vec3[7](vec3(0.75, 0.75, 0.75), vec3(0.75, 0.75, 0.0), vec3(0.0, 0.75, 0.75),
                             vec3(0.0, 0.75, 0.0), vec3(0.75, 0.0, 0.75), vec3(0.75, 0.0, 0.0),
                             vec3(0.0, 0.0, 0.75));
const vec3 REVERSE[7] = vec3[7](vec3(0.0, 0.0, 0.75), vec3(0.075), vec3(0.75, 0.0, 0.75), vec3(0.075),
                                vec3(0.0, 0.75, 0.75), vec3(0.075), vec3(0.75));
const int CODE_BITS = 24;

void main() {
    // Video coordinates: origin top-left, y down, in pixels.
    vec2 px = vec2(gl_FragCoord.x, resolution.y - gl_FragCoord.y);
    vec2 v = px / resolution;
    float cell = floor(resolution.y / 16.0);
    int bar = min(int(v.x * 7.0), 6);
    vec3 c;
    if (v.y < 0.60) {
        c = BARS[bar];
    } else if (v.y < 0.68) {
        c = REVERSE[bar];
    } else if (v.y < 0.84) {
        c = vec3(v.x);  // luma ramp
    } else {
        c = vec3(0.075);
        // time code: CODE_BITS cells, most significant first, white = 1
        float code_cell = floor(min(resolution.y / 16.0, resolution.x / float(CODE_BITS)));
        int ms = int(floor(time * 1000.0 + 0.5));
        int i = int(px.x / code_cell);
        if (i < CODE_BITS && px.y >= resolution.y - code_cell) {
            int bit = (ms >> (CODE_BITS - 1 - i)) & 1;
            c = vec3(float(bit));
        }
        // moving marker: one cell wide, crosses the frame every 4 seconds
        float x = fract(time / 4.0) * (resolution.x - cell);
        if (px.x >= x && px.x < x + cell && px.y < resolution.y - code_cell) c = vec3(1.0);
    }
    // orientation marker: pure red square, top-left
    if (px.x < cell && px.y < cell) c = vec3(1.0, 0.0, 0.0);
    colour = vec4(c, 1.0);
}
