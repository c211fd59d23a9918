import random, time
from ontology.store.port import GraphData, NodeData, EdgeData
from ontology.store.sql_backend import SqlGraphStore

def test_perf(project, db):
    rnd = random.Random(1)
    n = 10000
    nodes = tuple(NodeData(f"N{i:06d}", "Info", f"t{i}", "chunk " * 20, embedding=tuple(rnd.random() for _ in range(384))) for i in range(n))
    seen=set(); edges=[]
    while len(edges) < 50000:
        a, b = rnd.randrange(n), rnd.randrange(n)
        if a != b and (a,b) not in seen:
            seen.add((a,b)); edges.append(EdgeData(f"N{a:06d}", f"N{b:06d}", "LEADS_TO", 0.5))
    g = GraphData(nodes, tuple(edges))
    s = SqlGraphStore()
    t=time.time(); s.replace_graph(project.pk, g); print("replace", time.time()-t)
    t=time.time(); e = s.export_graph(project.pk); print("export", time.time()-t)
    t=time.time(); s.replace_graph(project.pk, g); print("re-replace", time.time()-t)
    assert e.nodes == tuple(sorted(nodes, key=lambda x: x.node_id))
