#version 330 core
// Classic sum-of-sines plasma: cheap to render, busy enough to stress an encoder.
in vec2 uv;
out vec4 colour;
uniform float time;
uniform vec2 resolution;
void main() {
    vec2 p = (uv - 0.5) * vec2(resolution.x / resolution.y, 1.0) * 6.0;
    float v = sin(p.x + time)
            + sin((p.y + time) * 0.5)
            + sin((p.x + p.y + time) * 0.5)
            + sin(length(p + vec2(sin(time * 0.3), cos(time * 0.5)) * 3.0) + time);
    vec3 c = 0.5 + 0.5 * cos(3.14159 * v + vec3(0.0, 2.094, 4.188));
    colour = vec4(c, 1.0);
}
