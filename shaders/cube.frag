#version 330 core
in vec3 normal;
in vec3 world;
out vec4 colour;
uniform vec3 light_dir;
uniform vec3 eye;
void main() {
    vec3 n = normalize(normal);
    // face colour from the normal, so each face is distinguishable
    vec3 base = 0.35 + 0.55 * abs(n);
    float diffuse = max(dot(n, -light_dir), 0.0);
    vec3 h = normalize(-light_dir + normalize(eye - world));
    float spec = pow(max(dot(n, h), 0.0), 48.0);
    colour = vec4(base * (0.18 + 0.82 * diffuse) + vec3(0.35) * spec, 1.0);
}
