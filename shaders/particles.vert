#version 330 core
// Every particle's position is a pure function of its id and time: no CPU work per frame.
in vec2 in_corner;
uniform float time;
uniform float aspect;
uniform float point_size;
out vec3 tint;
out vec2 corner;
float hash(float n) { return fract(sin(n) * 43758.5453123); }
void main() {
    float id = float(gl_InstanceID);
    float r = 0.15 + 0.8 * hash(id * 1.37);
    float speed = 0.2 + 0.8 * hash(id * 7.11);
    float phase = 6.2831 * hash(id * 3.97);
    float a = phase + time * speed;
    vec2 centre = vec2(cos(a), sin(a * 1.3)) * r;
    centre.y += 0.1 * sin(time * 2.0 + id * 0.01);
    tint = 0.5 + 0.5 * cos(6.2831 * (hash(id) + vec3(0.0, 0.33, 0.67)));
    corner = in_corner;
    vec2 offset = in_corner * point_size * vec2(1.0 / aspect, 1.0);
    gl_Position = vec4(centre + offset, 0.0, 1.0);
}
