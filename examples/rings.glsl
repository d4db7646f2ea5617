// A Shadertoy-style scene: glrec record examples/rings.glsl -o rings.mp4
void mainImage(out vec4 fragColor, in vec2 fragCoord) {
    vec2 p = (2.0 * fragCoord - iResolution.xy) / iResolution.y;
    float d = length(p);
    float rings = 0.5 + 0.5 * cos(20.0 * d - 4.0 * iTime);
    vec3 col = mix(vec3(0.1, 0.2, 0.5), vec3(1.0, 0.8, 0.3), rings) * smoothstep(1.6, 0.2, d);
    fragColor = vec4(col, 1.0);
}
