p-1p-1"-{"messages":[{"role":"user","content":"hi"}]}*P208€Ð•ÿ¼1J700-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01R$

overloaded
queue full­ (˜È•ÿ¼1