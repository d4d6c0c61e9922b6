/* Pointer-based data structures: a binary search tree, linked lists, a binary heap. */
#include <stddef.h>
#include <stdlib.h>

struct node { long key; void *value; struct node *left, *right; };
struct list { struct list *next; int value; };

struct node *bst_insert(struct node *root, long key, void *value) {
    struct node **link = &root;
    while (*link) {
        if (key == (*link)->key) { (*link)->value = value; return root; }
        link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    }
    struct node *n = malloc(sizeof *n);
    if (!n) return root;
    n->key = key; n->value = value; n->left = n->right = NULL;
    *link = n;
    return root;
}

void *bst_find(const struct node *n, long key) {
    while (n && n->key != key) n = key < n->key ? n->left : n->right;
    return n ? n->value : NULL;
}

int bst_height(const struct node *n) {
    if (!n) return 0;
    int a = bst_height(n->left), b = bst_height(n->right);
    return 1 + (a > b ? a : b);
}

struct list *list_reverse(struct list *l) {
    struct list *prev = NULL;
    while (l) { struct list *next = l->next; l->next = prev; prev = l; l = next; }
    return prev;
}

long list_sum(const struct list *l) {
    long s = 0;
    for (; l; l = l->next) s += l->value;
    return s;
}

struct heap { long *keys; int *ids; int size; };

void heap_push(struct heap *h, long key, int id) {
    int i = h->size++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (h->keys[parent] <= key) break;
        h->keys[i] = h->keys[parent]; h->ids[i] = h->ids[parent];
        i = parent;
    }
    h->keys[i] = key; h->ids[i] = id;
}

int heap_pop(struct heap *h) {
    int top = h->ids[0];
    long key = h->keys[--h->size];
    int id = h->ids[h->size], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->size) break;
        if (c + 1 < h->size && h->keys[c + 1] < h->keys[c]) c++;
        if (key <= h->keys[c]) break;
        h->keys[i] = h->keys[c]; h->ids[i] = h->ids[c];
        i = c;
    }
    h->keys[i] = key; h->ids[i] = id;
    return top;
}

struct particle { float x, y, z; float vx, vy, vz; int alive; };

int update_particles(struct particle *p, int n, float dt) {
    int alive = 0;
    for (int i = 0; i < n; i++) {
        if (!p[i].alive) continue;
        p[i].x += p[i].vx * dt; p[i].y += p[i].vy * dt; p[i].z += p[i].vz * dt;
        p[i].vy -= 9.81f * dt;
        if (p[i].y < 0) p[i].alive = 0; else alive++;
    }
    return alive;
}

void free_tree(struct node *n) {
    while (n) {
        free_tree(n->left);
        struct node *r = n->right;
        free(n);
        n = r;
    }
}
